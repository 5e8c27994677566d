"""The command line and the plan: the inputs read and validated before any host is contacted
(inputs), the plan of what is still to run (plan), the online planner every host asks (planner),
and sweep.yml run through ansible-runner (runner). `python -m sweep` (sweep/__main__.py) is the
one layer above it.

May import: every other package of sweep.
"""
