"""The languages the repository map reads: their grammars, and one tree-sitter
query each that captures definitions (`@class`, `@function`) and the names
other code refers to (`@ref`: calls, imports, base classes, type names)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import tree_sitter
import tree_sitter_go
import tree_sitter_javascript
import tree_sitter_python
import tree_sitter_rust
import tree_sitter_typescript

PYTHON = """
(class_definition) @class
(function_definition) @function
(call function: [(identifier) @ref (attribute attribute: (identifier) @ref)])
(import_from_statement name: [
  (dotted_name (identifier) @ref)
  (aliased_import name: (dotted_name (identifier) @ref))])
(class_definition superclasses: (argument_list [
  (identifier) @ref (attribute attribute: (identifier) @ref)]))
(decorator [(identifier) @ref (attribute attribute: (identifier) @ref)])
(type (identifier) @ref)
"""

# What JavaScript and TypeScript share; each adds its own below.
_ECMASCRIPT = """
(class_declaration) @class
(function_declaration) @function
(generator_function_declaration) @function
(method_definition) @function
(variable_declarator
  name: (identifier)
  value: [(arrow_function) (function_expression)]) @function
(call_expression function: [
  (identifier) @ref (member_expression property: (property_identifier) @ref)])
(new_expression constructor: [
  (identifier) @ref (member_expression property: (property_identifier) @ref)])
(import_specifier name: (identifier) @ref)
"""

JAVASCRIPT = (
    _ECMASCRIPT
    + """
(class_heritage (identifier) @ref)
"""
)

TYPESCRIPT = (
    _ECMASCRIPT
    + """
(abstract_class_declaration) @class
(interface_declaration) @class
(type_alias_declaration) @class
(enum_declaration) @class
(function_signature) @function
(method_signature) @function
(abstract_method_signature) @function
(extends_clause value: (identifier) @ref)
(type_identifier) @ref
"""
)

GO = """
(function_declaration) @function
(method_declaration) @function
(type_spec) @class
(call_expression function: [
  (identifier) @ref (selector_expression field: (field_identifier) @ref)])
(type_identifier) @ref
"""

RUST = """
(struct_item) @class
(enum_item) @class
(union_item) @class
(trait_item) @class
(type_item) @class
(impl_item) @impl
(mod_item body: (declaration_list)) @class
(function_item) @function
(function_signature_item) @function
(macro_definition) @function
(call_expression function: [
  (identifier) @ref
  (field_expression field: (field_identifier) @ref)
  (scoped_identifier name: (identifier) @ref)])
(macro_invocation macro: (identifier) @ref)
(type_identifier) @ref
"""


@dataclass(frozen=True)
class Language:
    """One language: its name, grammar, query, and the node types whose
    insides are not listed (a function's local helpers are not part of a
    file's outline)."""

    name: str
    grammar: object
    query_source: str
    local_scopes: frozenset[str]


_FUNCTIONS_JS = frozenset(
    {
        "function_declaration",
        "function_expression",
        "generator_function_declaration",
        "generator_function",
        "arrow_function",
        "method_definition",
    }
)

LANGUAGES = {
    language.name: language
    for language in (
        Language(
            "python",
            tree_sitter_python.language(),
            PYTHON,
            frozenset({"function_definition", "lambda"}),
        ),
        Language(
            "javascript", tree_sitter_javascript.language(), JAVASCRIPT, _FUNCTIONS_JS
        ),
        Language(
            "typescript",
            tree_sitter_typescript.language_typescript(),
            TYPESCRIPT,
            _FUNCTIONS_JS,
        ),
        Language(
            "tsx", tree_sitter_typescript.language_tsx(), TYPESCRIPT, _FUNCTIONS_JS
        ),
        Language(
            "go",
            tree_sitter_go.language(),
            GO,
            frozenset({"function_declaration", "method_declaration", "func_literal"}),
        ),
        Language(
            "rust",
            tree_sitter_rust.language(),
            RUST,
            frozenset({"function_item", "closure_expression"}),
        ),
    )
}

EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
}

# Folders of code a repository carries but does not write, and names of
# generated files: their symbols would crowd out the repository's own.
VENDORED_FOLDERS = frozenset(
    {
        "node_modules",
        "bower_components",
        "vendor",
        "third_party",
        "third-party",
        "thirdparty",
        "site-packages",
        ".venv",
        "venv",
        "__pycache__",
        "dist",
    }
)
GENERATED_SUFFIXES = (
    ".min.js",
    ".bundle.js",
    "_pb2.py",
    "_pb2_grpc.py",
    ".pb.go",
    "_generated.go",
    ".generated.ts",
    ".d.ts",
)


def language_for(path: str) -> str | None:
    """The language of a tracked file the map reads, or None (another kind
    of file, or vendored or generated code)."""
    folder, _, name = path.rpartition("/")
    dot = name.rfind(".")
    language = EXTENSIONS.get(name[dot:].lower()) if dot > 0 else None
    if language is None or name.lower().endswith(GENERATED_SUFFIXES):
        return None
    if folder and not VENDORED_FOLDERS.isdisjoint(folder.split("/")):
        return None
    return language


@functools.cache
def parser_and_query(name: str) -> tuple[tree_sitter.Parser, tree_sitter.Query]:
    """The (reused) parser and compiled query of a language of LANGUAGES."""
    language = LANGUAGES[name]
    grammar = tree_sitter.Language(language.grammar)
    return tree_sitter.Parser(grammar), tree_sitter.Query(
        grammar, language.query_source
    )
