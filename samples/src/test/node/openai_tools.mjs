// Drives `phoenix serve`'s tool calling with OpenAI's official Node SDK, as an application
// would, and prints what the SDK made of the answers as one JSON object on stdout.
//
//   node openai_tools.mjs JOB.json
//
// JOB.json: {"baseURL": ..., "model": NAME, "max_tokens": N, "tools": [...],
//            "conversations": [{"messages": [...]}, ...]}
// Each conversation is asked with the tools four ways: whole; streamed, the deltas
// accumulated by hand as the API reference describes (tool_calls by index, arguments
// concatenated); through the SDK's stream helper (chat.completions.stream), which
// reassembles and checks the chunks itself; and with parallel_tool_calls false. The first
// conversation is also asked with tool_choice "none", and run through runTools, which calls
// the functions and sends their results back (a second request with the calls and tool
// messages in its history).
import OpenAI from 'openai';
import { readFileSync } from 'node:fs';

const job = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const client = new OpenAI({ baseURL: job.baseURL, apiKey: 'not-needed', maxRetries: 0, timeout: 300_000 });
const base = { model: job.model, tools: job.tools, max_tokens: job.max_tokens, temperature: 0 };

function callsOf(calls) {
  return (calls ?? []).map(c => ({ id: c.id, type: c.type, name: c.function.name, arguments: c.function.arguments }));
}

async function whole(messages, extra = {}) {
  const r = await client.chat.completions.create({ ...base, messages, ...extra });
  const c = r.choices[0];
  return { content: c.message.content, tool_calls: callsOf(c.message.tool_calls), has_tool_calls: 'tool_calls' in c.message,
           finish_reason: c.finish_reason, prompt_tokens: r.usage.prompt_tokens, completion_tokens: r.usage.completion_tokens };
}

async function streamed(messages) {
  const stream = await client.chat.completions.create({ ...base, messages, stream: true,
    stream_options: { include_usage: true } });
  const s = { content: null, calls: [], finish_reason: null, prompt_tokens: null, header_chunks: 0,
              argument_chunks: 0, chunks: 0, order_ok: true };
  for await (const chunk of stream) {
    s.chunks++;
    if (chunk.usage) {
      s.prompt_tokens = chunk.usage.prompt_tokens;
    }
    for (const c of chunk.choices) {
      if (c.delta.content) {
        s.content = (s.content ?? '') + c.delta.content;
      }
      for (const t of c.delta.tool_calls ?? []) {
        if (t.id !== undefined) {
          s.header_chunks++;
          // a call opens with its id, type and name, at the next index
          s.order_ok &&= t.index === s.calls.length && t.type === 'function' && typeof t.function.name === 'string';
          s.calls[t.index] = { id: t.id, type: t.type, name: t.function.name, arguments: t.function.arguments ?? '' };
        } else {
          s.argument_chunks++;
          s.order_ok &&= s.calls[t.index] !== undefined && t.function.name === undefined;
          s.calls[t.index].arguments += t.function.arguments;
        }
      }
      if (c.finish_reason) {
        s.finish_reason = c.finish_reason;
      }
    }
  }
  return s;
}

async function helper(messages) {
  const done = [];
  const stream = client.chat.completions.stream({ ...base, messages })
    .on('tool_calls.function.arguments.done', e => done.push({ index: e.index, name: e.name,
                                                                parsed: e.parsed_arguments ?? null }));
  const final = await stream.finalChatCompletion();
  const c = final.choices[0];
  return { content: c.message.content, tool_calls: callsOf(c.message.tool_calls), finish_reason: c.finish_reason,
           done_events: done };
}

async function runTools(messages) {
  const seen = [];
  const tool = (name, f) => ({ type: 'function', function: { name, function: f, parse: JSON.parse,
    parameters: job.tools.find(t => t.function.name === name).function.parameters,
    description: job.tools.find(t => t.function.name === name).function.description } });
  const runner = client.chat.completions.runTools({ model: job.model, messages, max_tokens: job.max_tokens,
    temperature: 0, tools: [
      tool('get_weather', args => { seen.push({ name: 'get_weather', args }); return 'sunny, 18 C'; }),
      tool('add', args => { seen.push({ name: 'add', args }); return '5'; }),
    ] }, { maxChatCompletions: 2 });
  await runner.done();
  return { calls_run: seen, roles: runner.messages.map(m => m.role),
           tool_call_ids: runner.messages.filter(m => m.role === 'tool').map(m => m.tool_call_id) };
}

const out = { conversations: [] };
for (const c of job.conversations) {
  out.conversations.push({ whole: await whole(c.messages), stream: await streamed(c.messages),
                           helper: await helper(c.messages),
                           single: await whole(c.messages, { parallel_tool_calls: false }) });
}
const first = job.conversations[0].messages;
out.none = await whole(first, { tool_choice: 'none' });
out.run_tools = await runTools(first);
process.stdout.write(JSON.stringify(out) + '\n');
