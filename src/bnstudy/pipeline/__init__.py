"""The pipeline's machinery, standing on ``base`` alone: what a build costs before it runs (the cost
model ``plan``), how its jobs run on this machine (the job server ``jobserver``; Numba's cache
locator ``kernelcache``; each rule's code inputs, ``codedeps``), and the build record and its checks
(the hash manifest ``manifest``, with ``valuediff``, ``expected`` and ``repair``; the pinned values
``pinned``; ``provenance``; the determinism check ``determinism`` on simulated ``machines``; the
sample of a large config ``sample``). The science imports none of it, except each study's cost
entries (``studies/<name>/cost.py``: ``plan.Work``) and the comparison of builds
(``studies.compare``, which reads their manifests and pins): tests/architecture/test_package_layering.py."""
