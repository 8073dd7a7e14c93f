"""The benchmark layer: one method grammar (:mod:`.methods`), one interleaved runner (:mod:`.runner`), one results
schema (:mod:`.results`) that every table reads, and the ``fastdec bench`` command (:mod:`.cli`)."""
