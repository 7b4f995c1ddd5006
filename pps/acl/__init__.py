"""Remote ACL: for drafts created with ``remoteAcl: true`` pps asks the shop before acting.

``remote`` is the question and the answer (no Flask); the editor and the file endpoints call
:func:`pps.acl.remote.require` before each action, which raises :class:`AclDenied` (403:
an HTML page in the editor, JSON under ``/api-ext``). The ACL URL is set per client by the
operator (``pps client set-acl-url``).
"""
