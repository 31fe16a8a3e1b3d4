# docs/fields.md: every instance field, generated from the schema.
"${PYTHON:-python}" docs/tools/fields.py > docs/fields.md
