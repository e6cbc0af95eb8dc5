// Drives `phoenix serve`'s structured outputs with OpenAI's official Node SDK, as an application
// would, and prints what the SDK made of the answers as one JSON object on stdout.
//
//   node openai_structured.mjs JOB.json
//
// JOB.json: {"baseURL": ..., "model": NAME, "max_tokens": N, "schema": {...}, "tools": [...],
//            "messages": [...], "bad_schema": {...}, "regex": "...", "choices": [...], "pattern_schema": {...}}
// Asked: response_format json_schema whole, streamed (content deltas joined) and through
// chat.completions.parse (which JSON-parses the content into message.parsed); json_object;
// tool_choice naming a function, whole and streamed (arguments deltas joined by index);
// tool_choice "required", whole and streamed; a completion (/v1/completions) with
// response_format json_schema; vLLM's regex and choice (structured_outputs, guided_regex,
// guided_choice), a schema with patterns, a completion with guided_choice; and what the server
// cannot enforce (the SDK's errors).
import OpenAI from 'openai';
import { readFileSync } from 'node:fs';

const job = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const client = new OpenAI({ baseURL: job.baseURL, apiKey: 'not-needed', maxRetries: 0, timeout: 300_000 });
const base = { model: job.model, messages: job.messages, max_tokens: job.max_tokens, temperature: 0 };
const format = { type: 'json_schema', json_schema: { name: 'answer', schema: job.schema, strict: true } };

function callsOf(calls) {
  return (calls ?? []).map(c => ({ id: c.id, type: c.type, name: c.function.name, arguments: c.function.arguments }));
}

async function whole(extra) {
  const r = await client.chat.completions.create({ ...base, ...extra });
  const c = r.choices[0];
  return { content: c.message.content, tool_calls: callsOf(c.message.tool_calls), finish_reason: c.finish_reason,
           completion_tokens: r.usage.completion_tokens };
}

async function streamed(extra) {
  const stream = await client.chat.completions.create({ ...base, ...extra, stream: true });
  const s = { content: '', calls: [], finish_reason: null, argument_chunks: 0 };
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.delta?.content) s.content += choice.delta.content;
    for (const t of choice.delta?.tool_calls ?? []) {
      if (!s.calls[t.index]) s.calls[t.index] = { id: t.id, type: t.type, name: t.function?.name, arguments: '' };
      if (t.function?.arguments) { s.calls[t.index].arguments += t.function.arguments; s.argument_chunks++; }
    }
    if (choice.finish_reason) s.finish_reason = choice.finish_reason;
  }
  return s;
}

const out = {};
out.schema_whole = await whole({ response_format: format });
out.schema_stream = await streamed({ response_format: format });
const parsed = await client.chat.completions.parse({ ...base, response_format: format });
out.schema_parse = { parsed: parsed.choices[0].message.parsed, content: parsed.choices[0].message.content };
out.object_whole = await whole({ response_format: { type: 'json_object' }, max_tokens: job.max_tokens });
const named = { type: 'function', function: { name: job.tools[0].function.name } };
out.named_whole = await whole({ tools: job.tools, tool_choice: named });
out.named_stream = await streamed({ tools: job.tools, tool_choice: named });
out.required_whole = await whole({ tools: job.tools, tool_choice: 'required' });
out.required_stream = await streamed({ tools: job.tools, tool_choice: 'required' });
out.required_single = await whole({ tools: job.tools, tool_choice: 'required', parallel_tool_calls: false });
const completion = await client.completions.create({ model: job.model, prompt: 'The answer as JSON:', max_tokens: job.max_tokens,
  temperature: 0, response_format: format });
out.completion = { text: completion.choices[0].text, finish_reason: completion.choices[0].finish_reason };
// vLLM's own fields and extras, as clients send them through the SDK (extra keys go into the body)
out.guided_json = await whole({ guided_json: job.schema });
out.structured = await whole({ structured_outputs: { json: job.schema } });
out.ignore_eos = await whole({ response_format: format, ignore_eos: true });
out.stop_ids = await whole({ response_format: format, stop_token_ids: job.stop_token_ids });
out.defs_required = await whole({ tools: job.defs_tools, tool_choice: 'required', parallel_tool_calls: false });
// text guided by a regular expression or a list of choices, vLLM's old and new fields
out.choice_old = await whole({ guided_choice: job.choices });
out.choice = await whole({ structured_outputs: { choice: job.choices } });
out.regex = await whole({ structured_outputs: { regex: job.regex } });
out.regex_stream = await streamed({ structured_outputs: { regex: job.regex } });
out.regex_old = await whole({ guided_regex: job.regex });
out.pattern = await whole({ response_format: { type: 'json_schema', json_schema: { name: 'p', schema: job.pattern_schema } } });
const pick = await client.completions.create({ model: job.model, prompt: 'The city:', max_tokens: job.max_tokens,
  temperature: 0, guided_choice: job.choices });
out.completion_choice = { text: pick.choices[0].text, finish_reason: pick.choices[0].finish_reason };

async function failure(extra) {
  try {
    await client.chat.completions.create({ ...base, ...extra });
    return { error: null };
  } catch (e) {
    return { status: e.status, message: e.message, param: e.param ?? e.error?.param ?? null };
  }
}
out.bad = await failure({ response_format: { type: 'json_schema', json_schema: { name: 'bad', schema: job.bad_schema } } });
out.bad_regex = await failure({ structured_outputs: { regex: 'a(?=b)' } });
out.two_kinds = await failure({ guided_regex: 'a', structured_outputs: { choice: ['a'] } });
out.bad_choice = await failure({ guided_choice: ['a', 3] });
console.log(JSON.stringify(out));
