"""Function tools offered to agents, grouped in named toolsets (listed in team.yaml `toolsets:`)."""
