"""A customer's own print PDF for a draft: ``POST /api-ext/draft/<hash>/upload``.

The checks are :mod:`pps.preflight.pdf`, storage and rendering :mod:`pps.files.uploaded`;
this package is the endpoint that joins them.
"""
