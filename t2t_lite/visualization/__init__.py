"""Pictures of what the models do: attention maps, ponder times, result plots."""
