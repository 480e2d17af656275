// `import text from './kernel.wgsl?raw'`: Vite/Vitest natively, Node scripts via scripts/register-raw.mjs.
declare module '*.wgsl?raw' {
  const text: string;
  export default text;
}
