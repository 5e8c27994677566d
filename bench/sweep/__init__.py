"""Sweeps of server configurations (budget, topk, window, algorithm) on SGLang hosts.

Controller side: `plan` (grid, order, host split, resume), `progress` (a line per point),
`report` (summary.csv, report.md, plots), `runner` (ansible-runner, detached runs), `record`
(point.json / failure.json), `wheelhouse` (wheels for the hosts). Host side: `collect` (server
info, unit file and journal of the verified server run, packed with the bench records).
The playbook is sweep.yml; the CLI is `python -m bench.sweep`.
"""
