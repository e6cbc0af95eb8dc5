// Drives `phoenix serve --reasoning-parser` with OpenAI's official Node SDK and prints what the
// SDK made of the answers as one JSON object on stdout.
//
//   node openai_reasoning.mjs JOB.json
//
// JOB.json: {"requests": [{"name", "baseURL", "model", "max_tokens", "messages", "tools"?,
//                          "chat_template_kwargs"?, "response_format"?, "logit_bias"?, "seed"?,
//                          "tool_choice"?, "temperature"? (default 0)}, ...]}
// Each request is asked whole and streamed. The SDK keeps fields it does not know (vLLM's
// reasoning_content and reasoning) on the message and delta objects; the stream's deltas are
// accumulated by hand, with a note of whether any reasoning came after content and whether
// any delta let a think tag (or a piece of one) through.
import OpenAI from 'openai';
import { readFileSync } from 'node:fs';

const job = JSON.parse(readFileSync(process.argv[2], 'utf8'));

function params(r) {
  const p = { model: r.model, messages: r.messages, max_tokens: r.max_tokens, temperature: r.temperature ?? 0 };
  if (r.tools) p.tools = r.tools;
  for (const k of ['response_format', 'logit_bias', 'seed', 'tool_choice']) {
    if (r[k] !== undefined) p[k] = r[k];
  }
  if (r.chat_template_kwargs) p.chat_template_kwargs = r.chat_template_kwargs;
  return p;
}

const calls = cs => (cs ?? []).map(c => ({ name: c.function.name, arguments: c.function.arguments }));
const tagged = t => typeof t === 'string' && /<\/?think|think>/.test(t);

async function whole(client, r) {
  const res = await client.chat.completions.create(params(r));
  const m = res.choices[0].message;
  return { content: m.content, reasoning_content: m.reasoning_content ?? null, reasoning: m.reasoning ?? null,
           has_reasoning_content: 'reasoning_content' in m, tool_calls: calls(m.tool_calls),
           finish_reason: res.choices[0].finish_reason };
}

async function streamed(client, r) {
  const stream = await client.chat.completions.create({ ...params(r), stream: true });
  const s = { content: null, reasoning_content: null, reasoning: null, tool_calls: [], reasoning_chunks: 0,
              reasoning_after_content: false, leaked: false, finish_reason: null };
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      const d = c.delta;
      if (d.reasoning_content) {
        s.reasoning_chunks++;
        s.reasoning_after_content ||= s.content !== null || s.tool_calls.length > 0;
        s.reasoning_content = (s.reasoning_content ?? '') + d.reasoning_content;
      }
      if (d.reasoning) {
        s.reasoning = (s.reasoning ?? '') + d.reasoning;
      }
      if (d.content) {
        s.content = (s.content ?? '') + d.content;
      }
      s.leaked ||= (r.leak_check ?? true) && (tagged(d.content) || tagged(d.reasoning_content));
      for (const t of d.tool_calls ?? []) {
        if (t.id !== undefined) {
          s.tool_calls[t.index] = { name: t.function.name, arguments: t.function.arguments ?? '' };
        } else {
          s.tool_calls[t.index].arguments += t.function.arguments;
        }
      }
      if (c.finish_reason) {
        s.finish_reason = c.finish_reason;
      }
    }
  }
  return s;
}

const out = {};
for (const r of job.requests) {
  const client = new OpenAI({ baseURL: r.baseURL, apiKey: 'not-needed', maxRetries: 0, timeout: 300_000 });
  out[r.name] = { whole: await whole(client, r), stream: await streamed(client, r) };
}
process.stdout.write(JSON.stringify(out) + '\n');
