"""Sweeps of server configurations (budget, topk, window, algorithm) on SGLang hosts.

Controller side: `plan` (grid, order, host split, resume), `progress` (a line per point),
`report` (summary.csv, report.md, plots; from `results`' rows, `decision`'s winners, `render`'s
text), `runner` (ansible-runner, detached runs), `record` (point.json / failure.json),
`wheelhouse` (wheels for the hosts). Nothing here is installed on a host: the host package is
bench/ (its `bench run --archive` packs a point). The playbook is sweep.yml; the CLI is
`python -m sweep`, run from the repository root.
"""
