// `import text from './kernel.wgsl?raw'`: Vite/Vitest natively, Node scripts via scripts/register-raw.mjs.
declare module '*.wgsl?raw' {
  const text: string;
  export default text;
}

// `import url from 'pkg/file.wasm?url'`: Vite emits the file into the build and gives its URL.
declare module '*.wasm?url' {
  const url: string;
  export default url;
}
