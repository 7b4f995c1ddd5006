"""Variable data: a table of rows, one personalization (record) each, for one draft.

``tabular`` reads CSV and XLSX files through a column mapping, ``rows`` checks rows as the
editor checks values, ``page_info`` describes a draft's pages; ``api`` is the web part.
"""
