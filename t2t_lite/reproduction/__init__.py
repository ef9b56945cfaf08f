"""Reproducing the papers: comparison runs and tables beside the published ones."""
