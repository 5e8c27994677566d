"""What a sweep is asked for: the command line's parameters checked one by one (params), the grid's
points and their roles (points), the objective (objectives), the load and capacity settings (load)
and the traffic, a user's dataset sampled (workload).

May import: sweep.layout only (and bench, the standard library, third-party packages).
"""
