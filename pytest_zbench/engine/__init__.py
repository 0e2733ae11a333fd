"""An engine's own CI: a built runner deployed to a device by its content hash (docs/engine-ci.md)."""
