"""Deploying a sweep's winner: what deploy.yml rolls out (deploy) and the canary that must
reproduce the sweep's figures (canary).

May import: sweep.results, sweep.store, sweep.config, sweep.layout.
"""
