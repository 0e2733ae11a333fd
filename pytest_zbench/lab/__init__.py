"""Running the suite in a device lab: the CI matrix of devices, one leg of it, the Markdown summary of a run,
and what the plugin prints when it runs unattended (README "Running a device lab")."""
