"""Files a shop uploads (``POST /api-ext/file``): checked by content, stored per client, then
used as a variable-data source (CSV, XLSX) or an image value."""
