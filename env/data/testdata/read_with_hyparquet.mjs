// Prints a parquet file's rows as hyparquet (an independent JavaScript reader) decodes them.
// Run: npm install hyparquet@1.31.5; node read_with_hyparquet.mjs FILE
import { asyncBufferFromFile, parquetReadObjects, parquetMetadataAsync, parquetSchema } from 'hyparquet';
const file = await asyncBufferFromFile(process.argv[2]);
const rows = await parquetReadObjects({ file });
console.log(JSON.stringify(rows, (k, v) => typeof v === 'bigint' ? `${v}n` : v, 1));
