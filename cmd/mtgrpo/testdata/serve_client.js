// The official openai client against `mtgrpo serve` (OPENAI_BASE_URL, OPENAI_API_KEY): each
// check is one property of the endpoint as a client sees it. Prints the failures and exits 1 if
// any; EXPECT_MODEL is the served model's id.
const OpenAI = require("openai");

const client = new OpenAI({ maxRetries: 0 });
const model = process.env.EXPECT_MODEL;
const question = [{ role: "user", content: "What is 6 times 7?" }];
const failures = [];
const check = (ok, what) => ok || failures.push(what);

async function text(request) {
  const c = await client.chat.completions.create({ model, messages: question, max_tokens: 16, ...request });
  return c;
}

async function streamed(request) {
  const stream = await client.chat.completions.create({ model, messages: question, max_tokens: 16, stream: true,
    stream_options: { include_usage: true }, ...request });
  let content = "", finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) {
      content += ch.delta.content ?? "";
      finish = ch.finish_reason ?? finish;
    }
  }
  return { content, finish, usage };
}

async function main() {
  const models = await client.models.list();
  check(models.data.length === 1 && models.data[0].id === model, `models: ${JSON.stringify(models.data)}`);

  // A request's seed, temperature and top_p apply: the same seed draws the same tokens.
  const sampled = { temperature: 0.9, top_p: 0.95, seed: 11 };
  const a = await text(sampled);
  const content = a.choices[0].message.content;
  // The conversation's next call reuses the first call's ids (and its KV cache, parked when it
  // finished: the server counts it).
  const next = await client.chat.completions.create({ model, max_tokens: 4, messages: [...question,
    { role: "assistant", content }, { role: "user", content: "And 7 times 8?" }] });
  check(next.usage.prompt_tokens_details?.cached_tokens > a.usage.prompt_tokens, `next turn: ${JSON.stringify(next.usage)} (first call ${a.usage.prompt_tokens} prompt tokens)`);

  const b = await text(sampled);
  const c = await text({ ...sampled, seed: 12 });
  check(a.model === model && a.object === "chat.completion", `completion: ${JSON.stringify(a)}`);
  check(content.length >= 6 && content === b.choices[0].message.content, `seed 11 twice: ${JSON.stringify(content)}, ${JSON.stringify(b.choices[0].message.content)}`);
  check(content !== c.choices[0].message.content, `seeds 11 and 12 drew the same text ${JSON.stringify(content)}`);
  check(a.usage.completion_tokens === 16 && a.choices[0].finish_reason === "length", `max_tokens 16: ${JSON.stringify(a.usage)}, ${a.choices[0].finish_reason}`);

  // Streaming draws the same tokens and ends with the usage chunk.
  const s = await streamed(sampled);
  check(s.content === content && s.finish === "length" && s.usage?.completion_tokens === 16, `streamed: ${JSON.stringify(s)} against ${JSON.stringify(content)}`);

  // A stop string cuts the same draw before it, streamed or not.
  const stop = Array.from(content).slice(3, 5).join(""); // code points: never half a surrogate pair
  const cut = content.slice(0, content.indexOf(stop));
  const d = await text({ ...sampled, stop: [stop] });
  check(d.choices[0].message.content === cut && d.choices[0].finish_reason === "stop", `stop ${JSON.stringify(stop)}: ${JSON.stringify(d.choices[0])}, want ${JSON.stringify(cut)}`);
  const ds = await streamed({ ...sampled, stop: stop });
  check(ds.content === cut && ds.finish === "stop", `streamed stop ${JSON.stringify(stop)}: ${JSON.stringify(ds)}, want ${JSON.stringify(cut)}`);

  // Temperature 0 is greedy: the seed does not matter.
  const g1 = await text({ temperature: 0, seed: 1, max_tokens: 8 });
  const g2 = await text({ temperature: 0, seed: 2, max_tokens: 8 });
  check(g1.choices[0].message.content === g2.choices[0].message.content, "temperature 0 with seeds 1 and 2 differs");

  // What cannot be served is refused with OpenAI's error naming the field.
  try {
    await text({ n: 2 });
    check(false, "n = 2 was served");
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.param === "n", `n = 2: ${e}`);
  }

  if (failures.length) {
    console.error(failures.join("\n"));
    process.exit(1);
  }
  console.log(JSON.stringify({ ok: true, content, stop, cached: next.usage.prompt_tokens_details.cached_tokens }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
