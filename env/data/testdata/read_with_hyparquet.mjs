import { asyncBufferFromFile, parquetReadObjects, parquetMetadataAsync, parquetSchema } from 'hyparquet';
const file = await asyncBufferFromFile(process.argv[2]);
const rows = await parquetReadObjects({ file });
console.log(JSON.stringify(rows, (k, v) => typeof v === 'bigint' ? `${v}n` : v, 1));
