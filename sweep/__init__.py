"""Sweeps of server configurations (budget, topk, window, algorithm) on SGLang hosts, run from the
controller. Nothing here is installed on a host: the host package is bench/ (its `bench run
--archive` packs a point). The playbook is sweep.yml; the CLI is `python -m sweep`, run from the
repository root.

Packages, lowest first; each may import only those below it (tests/unit/test_sweep_structure.py):

- `layout` (a module): where a sweep's files are;
- `config`: what a sweep is asked for (parameters, points, objective, load, traffic);
- `store`: what a sweep keeps (records, the store of measurements, failures, claims, progress);
- `results`: its figures (rows, statistics, the winner or tie, per source);
- `search`: the model search beside the grid;
- `rollout`: deploy and canary;
- `report`: summary.csv, report.md, plots, capacity;
- `cli`: the inputs, the plan, the planner, ansible-runner; `__main__` above it.
"""
