"""The profile-driven streaming engine (sans-IO): markers, codecs and value handling."""
