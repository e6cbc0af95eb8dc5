// Drives `phoenix serve` with OpenAI's official Node SDK, as an application would, and prints
// what the SDK returned as one JSON object on stdout, for the Java tests to check.
//
//   node openai_client.mjs JOB.json
//
// JOB.json: {"baseURL": "http://127.0.0.1:PORT/v1", "model": NAME, "max_tokens": 16,
//            "chats": [{"messages": [...]}, ...], "completions": [{"prompt": "..."}, ...],
//            "errors": [{"messages": [...]}, ...], "concurrent": false}
// Each chat and completion is asked for greedily (temperature 0) twice: whole, and streamed
// with stream_options.include_usage. With "concurrent": true every streamed request is sent at
// once instead (and nothing whole). "errors" are chats the server must refuse.
import OpenAI from 'openai';
import { readFileSync } from 'node:fs';

const job = JSON.parse(readFileSync(process.argv[2], 'utf8'));
// no retries: a 429 or a 5xx must show, not be retried away
const client = new OpenAI({ baseURL: job.baseURL, apiKey: 'not-needed', maxRetries: 0, timeout: 300_000 });
const maxTokens = job.max_tokens ?? 16;

function usageOf(u) {
  return u == null ? null : {
    prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.total_tokens,
    cached_tokens: u.prompt_tokens_details?.cached_tokens ?? null,
  };
}

// what a stream of chunks amounts to, and what stays the same from chunk to chunk
function summary() {
  return { text: '', chunks: 0, ids: new Set(), created: new Set(), models: new Set(), objects: new Set(),
           first_role: undefined, first_content: undefined, finish_reason: null, usage: null,
           usage_chunks: 0, chunks_after_usage: 0 };
}

function finish(s) {
  return { ...s, ids: [...s.ids], created: [...s.created], models: [...s.models], objects: [...s.objects] };
}

function track(s, chunk) {
  s.chunks++;
  s.ids.add(chunk.id);
  s.created.add(chunk.created);
  s.models.add(chunk.model);
  s.objects.add(chunk.object);
  if (s.usage !== null) {
    s.chunks_after_usage++;
  }
  if (chunk.choices.length === 0) {
    s.usage_chunks++;
    s.usage = usageOf(chunk.usage);
  }
}

async function chatWhole(messages) {
  const r = await client.chat.completions.create({ model: job.model, messages, max_tokens: maxTokens, temperature: 0 });
  const c = r.choices[0];
  return { id: r.id, object: r.object, created: r.created, model: r.model, choices: r.choices.length,
           role: c.message.role, text: c.message.content, finish_reason: c.finish_reason, logprobs: c.logprobs,
           usage: usageOf(r.usage) };
}

async function chatStream(messages) {
  const stream = await client.chat.completions.create({ model: job.model, messages, max_tokens: maxTokens,
    temperature: 0, stream: true, stream_options: { include_usage: true } });
  const s = summary();
  for await (const chunk of stream) {
    track(s, chunk);
    for (const c of chunk.choices) {
      if (s.first_role === undefined) {
        s.first_role = c.delta.role ?? null;
        s.first_content = c.delta.content ?? null;
      }
      s.text += c.delta.content ?? '';
      if (c.finish_reason) {
        s.finish_reason = c.finish_reason;
      }
    }
  }
  return finish(s);
}

async function completionWhole(prompt) {
  const r = await client.completions.create({ model: job.model, prompt, max_tokens: maxTokens, temperature: 0 });
  const c = r.choices[0];
  return { id: r.id, object: r.object, created: r.created, model: r.model, choices: r.choices.length,
           text: c.text, finish_reason: c.finish_reason, logprobs: c.logprobs, usage: usageOf(r.usage) };
}

async function completionStream(prompt) {
  const stream = await client.completions.create({ model: job.model, prompt, max_tokens: maxTokens, temperature: 0,
    stream: true, stream_options: { include_usage: true } });
  const s = summary();
  for await (const chunk of stream) {
    track(s, chunk);
    for (const c of chunk.choices) {
      s.text += c.text ?? '';
      if (c.finish_reason) {
        s.finish_reason = c.finish_reason;
      }
    }
  }
  return finish(s);
}

async function refused(messages) {
  try {
    await client.chat.completions.create({ model: job.model, messages, max_tokens: maxTokens, temperature: 0 });
    return { status: 200 };
  } catch (e) {
    if (!(e instanceof OpenAI.APIError)) {
      throw e;
    }
    return { status: e.status, class: e.constructor.name, message: e.error?.message ?? null, type: e.type ?? null,
             param: e.param ?? null, code: e.code ?? null };
  }
}

const out = { models: null, chats: [], completions: [], errors: [] };
const list = await client.models.list();
out.models = list.data.map(m => ({ id: m.id, object: m.object, owned_by: m.owned_by, created: m.created }));
if (job.concurrent) {
  const all = [...(job.chats ?? []).map(c => chatStream(c.messages)),
               ...(job.completions ?? []).map(c => completionStream(c.prompt))];
  const results = await Promise.all(all);
  const nChats = (job.chats ?? []).length;
  out.chats = results.slice(0, nChats).map(stream => ({ stream }));
  out.completions = results.slice(nChats).map(stream => ({ stream }));
} else {
  for (const c of job.chats ?? []) {
    out.chats.push({ whole: await chatWhole(c.messages), stream: await chatStream(c.messages) });
  }
  for (const c of job.completions ?? []) {
    out.completions.push({ whole: await completionWhole(c.prompt), stream: await completionStream(c.prompt) });
  }
}
for (const e of job.errors ?? []) {
  out.errors.push(await refused(e.messages));
}
process.stdout.write(JSON.stringify(out) + '\n');
