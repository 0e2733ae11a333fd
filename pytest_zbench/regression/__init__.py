"""Regression detection: run history, the launch-level gate, A/B scheduling, change points, calibration.

Plain Python (numpy, scipy, SQLAlchemy Core over SQLite or PostgreSQL); nothing here imports pytest. See
docs/regression.md.
"""
