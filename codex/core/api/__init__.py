"""The API's shared plumbing, one module each: `errors` (the one error shape),
`pagination` (cursors), `serializers` (strict input), `filters` (FilterSets and
their backend), `schema` (OpenAPI), `views` (the base views, viewsets and
router), `docs` and `urls` (/api/schema/, /api/docs/).

Nothing is imported here: `pagination` is loaded by DRF's generic views while
they load, so it must not pull in the modules that import them.
"""
