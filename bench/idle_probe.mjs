// Scratch: load the model in node-llama-cpp as native.mjs does, evaluate once, then stay idle.
process.env.NODE_LLAMA_CPP_SKIP_DOWNLOAD = 'true';
const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
const llama = await getLlama({ gpu: false, build: 'never', skipDownload: true, usePrebuiltBinaries: true, maxThreads: 1, logLevel: LlamaLogLevel.error, progressLogs: false });
const model = await llama.loadModel({ modelPath: process.argv[2], gpuLayers: 0 });
const context = await model.createContext({ contextSize: 512, batchSize: 512, threads: { ideal: 1, min: 1 }, sequences: 1 });
const seq = context.getSequence();
const ids = model.tokenize('The quick brown fox jumps over the lazy dog. '.repeat(20), false).slice(0, 128);
const it = seq.evaluate(ids, { temperature: 0 });
await it.next();
for (let i = 0; i < 8; i++) await it.next();
await it.return();
console.log('idle');
await new Promise((r) => setTimeout(r, Number(process.argv[3] ?? 60) * 1000));
