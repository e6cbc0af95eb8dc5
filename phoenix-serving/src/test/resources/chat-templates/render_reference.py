"""Expected renders for ChatTemplate's Jinja2 compatibility tests (ChatTemplateJinja2Test), from
Python's jinja2 in exactly the environment transformers compiles chat templates in
(transformers.utils.chat_template_utils._compile_jinja_template):
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[generation tag,
loopcontrols]), globals raise_exception (jinja2.exceptions.TemplateError) and strftime_now, and
transformers' own tojson filter. strftime_now reads a fixed clock (cases.json "now") so that the
expected text does not depend on the day it was written.

Inputs, next to this script:
- snippets.txt: small templates, one construct each, separated by lines "=== name"; each renders
  with cases.json "snippet_variables";
- templates/*.jinja: whole chat templates in the style of model families, rendered for every
  conversation in cases.json "conversations" (with add_generation_prompt false and true) and
  every variable set in "template_runs";
- cases.json: the clock, the variables, the conversations and which template gets which extra
  variables.

Output: expected.json (committed, so that the tests need no Python). Usage:
    python3 render_reference.py            (jinja2 3.1.x; rewrites expected.json)
    python3 render_reference.py --out F    (writes F instead; ChatTemplateReferenceTest compares)
"""
import datetime
import json
import os
import sys

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))


class GenerationTag(Extension):
    """transformers' AssistantTracker without the tracking: {% generation %} renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def environment(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return now.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


_compiled = {}


def render(env, source, variables):
    try:
        if source not in _compiled:
            _compiled[source] = env.from_string(source)
        return {"text": _compiled[source].render(**variables)}
    except Exception as e:  # the message is what ChatTemplateException must carry for raise_exception
        return {"error": str(e), "error_type": type(e).__name__}


def snippets():
    out, name, lines = [], None, []
    with open(os.path.join(HERE, "snippets.txt"), encoding="utf-8") as f:
        for line in f.read().split("\n"):
            if line.startswith("=== "):
                if name is not None:
                    out.append((name, "\n".join(lines)))
                name, lines = line[4:].strip(), []
            elif name is not None:
                lines.append(line)
    if name is not None:
        out.append((name, "\n".join(lines)))
    return out


def dump(expected):
    """One line per snippet and per render, so that a change shows as a small diff."""
    line = lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True)
    parts = ['{\n "jinja2": ' + line(expected["jinja2"]) + ',\n "snippets": {\n']
    parts.append(",\n".join("  " + line(k) + ": " + line(v) for k, v in expected["snippets"].items()))
    parts.append('\n },\n "templates": {\n')
    parts.append(",\n".join("  " + line(k) + ": [\n" + ",\n".join("   " + line(r) for r in v) + "\n  ]"
                           for k, v in expected["templates"].items()))
    parts.append("\n }\n}\n")
    return "".join(parts)


def main():
    out = os.path.join(HERE, "expected.json")
    if len(sys.argv) == 3 and sys.argv[1] == "--out":
        out = sys.argv[2]
    elif len(sys.argv) != 1:
        sys.exit("usage: render_reference.py [--out FILE]")
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as f:
        cases = json.load(f)
    env = environment(datetime.datetime.fromisoformat(cases["now"]))
    expected = {"jinja2": jinja2.__version__, "snippets": {}, "templates": {}}
    for name, source in snippets():
        if name in expected["snippets"]:
            sys.exit("duplicate snippet " + name)
        expected["snippets"][name] = {"template": source, **render(env, source, cases["snippet_variables"])}
    for run in cases["template_runs"]:
        with open(os.path.join(HERE, "templates", run["template"]), encoding="utf-8") as f:
            source = f.read()
        results = []
        for conversation in run.get("conversations", sorted(cases["conversations"])):
            for extra_index, extra in enumerate(run.get("extra", [{}])):
                for add_generation_prompt in (False, True):
                    variables = {**run["special_tokens"], **extra, "messages": cases["conversations"][conversation],
                                 "add_generation_prompt": add_generation_prompt}
                    variables.setdefault("tools", None)
                    variables.setdefault("documents", None)
                    results.append({"conversation": conversation, "extra": extra_index,
                                    "add_generation_prompt": add_generation_prompt, **render(env, source, variables)})
        expected["templates"][run["template"]] = results
    with open(out, "w", encoding="utf-8") as f:
        f.write(dump(expected))
    print("snippets", len(expected["snippets"]), "template renders",
          sum(len(v) for v in expected["templates"].values()))


if __name__ == "__main__":
    main()
