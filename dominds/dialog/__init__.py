"""In-memory dialog model over the store: Dialog, RootDialog, SubDialog and the registries.

Objects here are caches of the files; every change goes to disk first and is then published.
"""
