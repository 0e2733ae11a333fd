"""A device's facts and control: its transport and launches, lease, health, preparation, environment, the
timer check, the conditions probe, the refresh rate and Android's own frame records (docs/architecture.md)."""
