# gec track: rules are added by the issue that builds this track (see docs/ARCHITECTURE.md).
