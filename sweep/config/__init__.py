"""What a sweep is asked for: the command line's and the inventory's parameters parsed and checked
in one pass (params), the grid's points and their roles (points), the objective (objectives), the
load and capacity settings' names and bench flags (load) and a user's dataset, sampled (workload).

May import: sweep.layout only (and bench, the standard library, third-party packages).
"""
