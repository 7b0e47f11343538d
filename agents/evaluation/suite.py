"""The evaluation's sample repositories and requests.

Two small repositories in different languages: `mathkit` (Python, tested with
pytest) and `strkit` (JavaScript, tested with node's own test runner). Each
request says what to add, in words a person would use, with acceptance
criteria; its hidden tests (written to the merged checkout only when judging)
decide whether it was resolved. `solution` is what the scripted agents write:
a correct change with a test, so the harness itself can be checked without a
model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PY_TEST = "python -B -m pytest -q -p no:cacheprovider --junitxml={junit_xml}"
JS_TEST = "node --test --test-reporter=junit --test-reporter-destination={junit_xml}"


@dataclass(frozen=True)
class SampleRepository:
    """A repository to seed: its files, the command its tests run with, and
    the command the hidden tests run with."""

    name: str
    language: str
    files: dict[str, str]
    test_command: str
    hidden_command: list[str]


@dataclass(frozen=True)
class Case:
    """One feature request of the suite."""

    id: str
    repository: str
    title: str
    description: str
    criteria: str
    hidden_tests: dict[str, str]
    solution: dict[str, str] = field(default_factory=dict)


MATHKIT = SampleRepository(
    name="mathkit",
    language="python",
    files={
        "mathkit.py": '"""Small math helpers."""\n\n\ndef add(a, b):\n'
        '    """The sum of a and b."""\n    return a + b\n',
        "test_mathkit.py": "from mathkit import add\n\n\ndef test_add():\n"
        "    assert add(2, 3) == 5\n",
        "README.md": "# mathkit\n\nSmall math helpers. Run the tests with pytest.\n",
    },
    test_command=PY_TEST,
    hidden_command=["python", "-B", "-m", "pytest", "-q", "-p", "no:cacheprovider"],
)
STRKIT = SampleRepository(
    name="strkit",
    language="javascript",
    files={
        "strkit.js": "'use strict';\n\nfunction capitalize(s) {\n"
        "  return s.charAt(0).toUpperCase() + s.slice(1);\n}\n\n"
        "module.exports = { capitalize };\n",
        "strkit.test.js": "const test = require('node:test');\n"
        "const assert = require('node:assert');\n"
        "const { capitalize } = require('./strkit');\n\n"
        "test('capitalize', () => {\n"
        "  assert.strictEqual(capitalize('abc'), 'Abc');\n});\n",
        "README.md": "# strkit\n\nString helpers for Node. Run the tests with "
        "`node --test`.\n",
        "package.json": '{\n  "name": "strkit",\n  "version": "1.0.0",\n'
        '  "main": "strkit.js",\n  "scripts": {"test": "node --test"}\n}\n',
    },
    test_command=JS_TEST,
    hidden_command=["node", "--test"],
)
REPOSITORIES = {repo.name: repo for repo in (MATHKIT, STRKIT)}


def _py(name: str, body: str, doc: str) -> str:
    return f'\n\ndef {name}:\n    """{doc}"""\n{body}'


def _mathkit_with(*functions: str) -> str:
    return MATHKIT.files["mathkit.py"] + "".join(functions)


def _js_with(names: list[str], functions: str) -> str:
    base = STRKIT.files["strkit.js"].replace("\nmodule.exports = { capitalize };\n", "")
    exported = ", ".join(["capitalize", *names])
    return f"{base}\n{functions}\nmodule.exports = {{ {exported} }};\n"


def _hidden_py(body: str) -> dict[str, str]:
    return {"test_hidden_acceptance.py": body}


def _hidden_js(body: str) -> dict[str, str]:
    head = (
        "const test = require('node:test');\n"
        "const assert = require('node:assert');\n"
        "const kit = require('./strkit');\n\n"
    )
    return {"hidden_acceptance.test.js": head + body}


CASES: list[Case] = [
    Case(
        id="py-mul",
        repository="mathkit",
        title="Add multiplication",
        description="mathkit can add but not multiply. Add mul(a, b).",
        criteria="- mul(2, 3) == 6\n- mul(-2, 3) == -6",
        hidden_tests=_hidden_py(
            "from mathkit import mul\n\n\ndef test_mul():\n"
            "    assert mul(2, 3) == 6\n    assert mul(-2, 3) == -6\n"
            "    assert mul(0, 9) == 0\n"
        ),
        solution={
            "mathkit.py": _mathkit_with(
                _py("mul(a, b)", "    return a * b\n", "The product of a and b.")
            ),
            "test_mul.py": "from mathkit import mul\n\n\ndef test_mul():\n"
            "    assert mul(2, 3) == 6\n",
        },
    ),
    Case(
        id="py-clamp",
        repository="mathkit",
        title="Clamp a number into a range",
        description="Add clamp(x, low, high): x limited to [low, high]. A low "
        "above high is a ValueError.",
        criteria="- clamp(5, 0, 3) == 3\n- clamp(-1, 0, 3) == 0\n"
        "- clamp(1, 3, 0) raises ValueError",
        hidden_tests=_hidden_py(
            "import pytest\n\nfrom mathkit import clamp\n\n\ndef test_clamp():\n"
            "    assert clamp(5, 0, 3) == 3\n    assert clamp(-1, 0, 3) == 0\n"
            "    assert clamp(2, 0, 3) == 2\n    with pytest.raises(ValueError):\n"
            "        clamp(1, 3, 0)\n"
        ),
        solution={
            "mathkit.py": _mathkit_with(
                _py(
                    "clamp(x, low, high)",
                    "    if low > high:\n        raise ValueError('low > high')\n"
                    "    return max(low, min(x, high))\n",
                    "x limited to [low, high].",
                )
            ),
            "test_clamp.py": "from mathkit import clamp\n\n\ndef test_clamp():\n"
            "    assert clamp(5, 0, 3) == 3\n",
        },
    ),
    Case(
        id="py-prime",
        repository="mathkit",
        title="Tell whether a number is prime",
        description="Add is_prime(n) for integers; numbers below 2 are not prime.",
        criteria="- is_prime(7) is True\n- is_prime(1) is False\n"
        "- is_prime(9) is False",
        hidden_tests=_hidden_py(
            "from mathkit import is_prime\n\n\ndef test_is_prime():\n"
            "    primes = [n for n in range(-3, 30) if is_prime(n)]\n"
            "    assert primes == [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]\n"
        ),
        solution={
            "mathkit.py": _mathkit_with(
                _py(
                    "is_prime(n)",
                    "    if n < 2:\n        return False\n"
                    "    return all(n % d for d in range(2, int(n**0.5) + 1))\n",
                    "Whether n is a prime number.",
                )
            ),
            "test_is_prime.py": "from mathkit import is_prime\n\n\n"
            "def test_is_prime():\n    assert is_prime(7) and not is_prime(9)\n",
        },
    ),
    Case(
        id="py-factorial",
        repository="mathkit",
        title="Factorial",
        description="Add factorial(n) for n >= 0; a negative n is a ValueError.",
        criteria="- factorial(0) == 1\n- factorial(5) == 120\n"
        "- factorial(-1) raises ValueError",
        hidden_tests=_hidden_py(
            "import pytest\n\nfrom mathkit import factorial\n\n\n"
            "def test_factorial():\n    assert factorial(0) == 1\n"
            "    assert factorial(5) == 120\n    with pytest.raises(ValueError):\n"
            "        factorial(-1)\n"
        ),
        solution={
            "mathkit.py": _mathkit_with(
                _py(
                    "factorial(n)",
                    "    if n < 0:\n        raise ValueError('n must be >= 0')\n"
                    "    result = 1\n    for k in range(2, n + 1):\n"
                    "        result *= k\n    return result\n",
                    "n! for n >= 0.",
                )
            ),
            "test_factorial.py": "from mathkit import factorial\n\n\n"
            "def test_factorial():\n    assert factorial(5) == 120\n",
        },
    ),
    Case(
        id="py-mean",
        repository="mathkit",
        title="Mean of a list of numbers",
        description="Add mean(values): the arithmetic mean; an empty list is a "
        "ValueError.",
        criteria="- mean([1, 2, 3]) == 2\n- mean([]) raises ValueError",
        hidden_tests=_hidden_py(
            "import pytest\n\nfrom mathkit import mean\n\n\ndef test_mean():\n"
            "    assert mean([1, 2, 3]) == 2\n    assert mean([1, 2]) == 1.5\n"
            "    with pytest.raises(ValueError):\n        mean([])\n"
        ),
        solution={
            "mathkit.py": _mathkit_with(
                _py(
                    "mean(values)",
                    "    values = list(values)\n    if not values:\n"
                    "        raise ValueError('mean of nothing')\n"
                    "    return sum(values) / len(values)\n",
                    "The arithmetic mean of values.",
                )
            ),
            "test_mean.py": "from mathkit import mean\n\n\ndef test_mean():\n"
            "    assert mean([1, 2, 3]) == 2\n",
        },
    ),
    Case(
        id="js-reverse",
        repository="strkit",
        title="Reverse a string",
        description="Add reverse(s) to strkit, exported like capitalize.",
        criteria="- reverse('abc') === 'cba'\n- reverse('') === ''",
        hidden_tests=_hidden_js(
            "test('reverse', () => {\n"
            "  assert.strictEqual(kit.reverse('abc'), 'cba');\n"
            "  assert.strictEqual(kit.reverse(''), '');\n});\n"
        ),
        solution={
            "strkit.js": _js_with(
                ["reverse"],
                "function reverse(s) {\n  return [...s].reverse().join('');\n}\n",
            ),
            "reverse.test.js": "const test = require('node:test');\n"
            "const assert = require('node:assert');\n"
            "const { reverse } = require('./strkit');\n\n"
            "test('reverse', () => assert.strictEqual(reverse('ab'), 'ba'));\n",
        },
    ),
    Case(
        id="js-palindrome",
        repository="strkit",
        title="Palindromes",
        description="Add isPalindrome(s): true when s reads the same backwards, "
        "ignoring case, spaces and punctuation.",
        criteria="- isPalindrome('A man, a plan, a canal: Panama') is true\n"
        "- isPalindrome('abc') is false",
        hidden_tests=_hidden_js(
            "test('isPalindrome', () => {\n"
            "  assert.strictEqual(kit.isPalindrome('A man, a plan, a canal: "
            "Panama'), true);\n"
            "  assert.strictEqual(kit.isPalindrome('abc'), false);\n"
            "  assert.strictEqual(kit.isPalindrome(''), true);\n});\n"
        ),
        solution={
            "strkit.js": _js_with(
                ["isPalindrome"],
                "function isPalindrome(s) {\n"
                "  const t = s.toLowerCase().replace(/[^a-z0-9]/g, '');\n"
                "  return t === [...t].reverse().join('');\n}\n",
            ),
            "palindrome.test.js": "const test = require('node:test');\n"
            "const assert = require('node:assert');\n"
            "const { isPalindrome } = require('./strkit');\n\n"
            "test('isPalindrome', () => assert.ok(isPalindrome('Aba')));\n",
        },
    ),
    Case(
        id="js-vowels",
        repository="strkit",
        title="Count vowels",
        description="Add countVowels(s): how many of a, e, i, o, u (either case) "
        "s holds.",
        criteria="- countVowels('Hello World') === 3\n- countVowels('xyz') === 0",
        hidden_tests=_hidden_js(
            "test('countVowels', () => {\n"
            "  assert.strictEqual(kit.countVowels('Hello World'), 3);\n"
            "  assert.strictEqual(kit.countVowels('AEIOU'), 5);\n"
            "  assert.strictEqual(kit.countVowels('xyz'), 0);\n});\n"
        ),
        solution={
            "strkit.js": _js_with(
                ["countVowels"],
                "function countVowels(s) {\n"
                "  return (s.match(/[aeiou]/gi) || []).length;\n}\n",
            ),
            "vowels.test.js": "const test = require('node:test');\n"
            "const assert = require('node:assert');\n"
            "const { countVowels } = require('./strkit');\n\n"
            "test('countVowels', () => assert.strictEqual(countVowels('aa'), 2));\n",
        },
    ),
    Case(
        id="js-slugify",
        repository="strkit",
        title="Slugs for URLs",
        description="Add slugify(s): lower case, runs of anything but letters and "
        "digits become one hyphen, no hyphen at either end.",
        criteria="- slugify('Hello, World!') === 'hello-world'\n"
        "- slugify('  a  b ') === 'a-b'",
        hidden_tests=_hidden_js(
            "test('slugify', () => {\n"
            "  assert.strictEqual(kit.slugify('Hello, World!'), 'hello-world');\n"
            "  assert.strictEqual(kit.slugify('  a  b '), 'a-b');\n"
            "  assert.strictEqual(kit.slugify('Already-slug'), 'already-slug');\n"
            "});\n"
        ),
        solution={
            "strkit.js": _js_with(
                ["slugify"],
                "function slugify(s) {\n  return s.toLowerCase()"
                ".replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');\n}\n",
            ),
            "slugify.test.js": "const test = require('node:test');\n"
            "const assert = require('node:assert');\n"
            "const { slugify } = require('./strkit');\n\n"
            "test('slugify', () => assert.strictEqual(slugify('A B'), 'a-b'));\n",
        },
    ),
    Case(
        id="js-truncate",
        repository="strkit",
        title="Truncate long text",
        description="Add truncate(s, n): s itself when it has at most n "
        "characters, else its first n - 1 characters followed by '…'.",
        criteria="- truncate('hello', 10) === 'hello'\n"
        "- truncate('hello world', 6) === 'hello…'",
        hidden_tests=_hidden_js(
            "test('truncate', () => {\n"
            "  assert.strictEqual(kit.truncate('hello', 10), 'hello');\n"
            "  assert.strictEqual(kit.truncate('hello world', 6), 'hello…');\n"
            "  assert.strictEqual(kit.truncate('abc', 3), 'abc');\n});\n"
        ),
        solution={
            "strkit.js": _js_with(
                ["truncate"],
                "function truncate(s, n) {\n"
                "  return s.length <= n ? s : s.slice(0, n - 1) + '…';\n}\n",
            ),
            "truncate.test.js": "const test = require('node:test');\n"
            "const assert = require('node:assert');\n"
            "const { truncate } = require('./strkit');\n\n"
            "test('truncate', () => assert.strictEqual(truncate('abc', 2), 'a…'));\n",
        },
    ),
]
