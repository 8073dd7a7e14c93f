"""The tracks, one folder each (fastdec.tracks.registry lists them), and what their plans share."""
