"""What an operator reads: summary.csv, report.md and the plots of a sweep (report puts them
together, render writes the text, plots draws), and capacity at an SLO (capacity).

May import: sweep.rollout, sweep.search, sweep.results, sweep.store, sweep.config, sweep.layout.
"""
