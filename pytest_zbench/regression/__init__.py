"""Regression detection: run history, the launch-level gate, A/B scheduling, change points, calibration.

Plain Python (numpy, scipy, sqlite3); nothing here imports pytest. See docs/regression.md.
"""
