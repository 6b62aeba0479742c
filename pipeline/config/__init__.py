"""Run configuration: the schema, the YAML file, presets, the names it resolves (models, networks,
reference lists) and the preflight that checks it all before a run."""
