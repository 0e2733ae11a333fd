"""Measurement: a scene's launches (plain, A/B, adaptive, sustained), cold start, what is kept beside each
launch, and Android's frames as a series of their own (docs/architecture.md)."""
