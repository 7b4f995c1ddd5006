"""Reviews (proof approval): a shop asks some of its users to approve a draft's proof.

Core (no Flask): :mod:`~pps.reviews.model` (the review and its state machine),
:mod:`~pps.reviews.store` (storage on the repository's engine), :mod:`~pps.reviews.proof`
(marked page images and the proof PDF), :mod:`~pps.reviews.service` (the operations and
the close notification). Web: :mod:`~pps.reviews.api` (``/api-ext/review`` and the proof
PDF's file endpoint), :mod:`~pps.reviews.web` (the reviewer's page), ``schemas``.
"""
