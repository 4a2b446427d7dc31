// Writes verl_gsm8k_arrow.parquet with the Apache Arrow Rust parquet writer (parquet-wasm), as an
// independent reference for the reader. Run: npm install parquet-wasm@0.8.0 apache-arrow@21.2.0;
// node make_arrow_fixture.mjs verl_gsm8k_arrow.parquet
import * as arrow from 'apache-arrow';
import { createRequire } from 'module';
const require = createRequire(import.meta.url);
const pw = require('parquet-wasm/node');
import fs from 'fs';

// verl GSM8K layout, as pyarrow infers it from the preprocess's dicts:
// prompt list<struct<content, role>>, reward_model struct<ground_truth, style>,
// extra_info struct<answer, index:int64, question, split>.
const Msg = new arrow.Struct([new arrow.Field('content', new arrow.Utf8(), true), new arrow.Field('role', new arrow.Utf8(), true)]);
const schema = new arrow.Schema([
  new arrow.Field('data_source', new arrow.Utf8(), true),
  new arrow.Field('prompt', new arrow.List(new arrow.Field('element', Msg, true)), true),
  new arrow.Field('ability', new arrow.Utf8(), true),
  new arrow.Field('reward_model', new arrow.Struct([new arrow.Field('ground_truth', new arrow.Utf8(), true), new arrow.Field('style', new arrow.Utf8(), true)]), true),
  new arrow.Field('extra_info', new arrow.Struct([new arrow.Field('answer', new arrow.Utf8(), true), new arrow.Field('index', new arrow.Int64(), true), new arrow.Field('question', new arrow.Utf8(), true), new arrow.Field('split', new arrow.Utf8(), true)]), true),
]);
const q = ['Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?', 'Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. How much did she earn?'];
const a = ['Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72', 'Weng earns 12/60 = $<<12/60=0.2>>0.2 per minute.\nWorking 50 minutes, she earned 0.2 x 50 = $<<0.2*50=10>>10.\n#### 10'];
const instr = ' Let\'s think step by step and output the final answer after "####".';
const rows = q.map((qq, i) => ({
  data_source: 'openai/gsm8k',
  prompt: [{ content: qq + instr, role: 'user' }],
  ability: 'math',
  reward_model: { ground_truth: ['72', '10'][i], style: 'rule' },
  extra_info: { answer: a[i], index: BigInt(i), question: qq, split: 'train' },
}));
const cols = {};
for (const f of schema.fields) cols[f.name] = arrow.vectorFromArray(rows.map(r => r[f.name]), f.type);
const table = new arrow.Table(schema, cols);
const ipc = arrow.tableToIPC(table, 'stream');
const wt = pw.Table.fromIPCStream(ipc);
const props = new pw.WriterPropertiesBuilder().setCompression(pw.Compression.SNAPPY).build();
const out = pw.writeParquet(wt, props);
fs.writeFileSync(process.argv[2], out);
console.log('wrote', out.length, 'bytes');
