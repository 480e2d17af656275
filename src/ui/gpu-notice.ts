/**
 * `<hearth-gpu-notice>`: says plainly when this browser cannot run Hearth's engine: no WebGPU
 * (`navigator.gpu` missing), or WebGPU without a usable adapter (the engine's `gpu_error`), and
 * what is needed, and that chat then runs on the CPU backend when it does. Without it, training
 * would only fail request by request. Renders nothing when the GPU is fine.
 *
 * Not here: the engine status details (engine-status.ts).
 */
import { LitElement, css, html, nothing } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import type { EngineStatusView } from '../service/engine-status';

@customElement('hearth-gpu-notice')
export class HearthGpuNotice extends LitElement {
  static override styles = css`
    :host {
      display: block;
    }
    section {
      margin: 1rem auto 0;
      max-width: calc(72rem - 2.5rem);
      box-sizing: border-box;
      padding: 0.9rem 1.1rem;
      border-radius: 0.6rem;
      background: var(--hearth-warn-bg);
      border: 1px solid var(--hearth-border);
      color: var(--hearth-fg);
      line-height: 1.5;
    }
    h2 {
      margin: 0 0 0.4rem;
      font-size: 1.05rem;
    }
    ul {
      margin: 0.4rem 0 0;
      padding-left: 1.2rem;
    }
  `;

  /** The latest engine status, when the shell has one. */
  @property({ attribute: false }) status: EngineStatusView | undefined;

  override render() {
    const noWebGpu = !('gpu' in navigator) || !navigator.gpu;
    const gpuError = this.status && !this.status.gpu && this.status.gpu_status !== 'acquiring' ? this.status.gpu_error : null;
    if (!noWebGpu && !gpuError) return nothing;
    return html`<section role="alert" aria-labelledby="gpu-title" data-field="gpu-notice">
      <h2 id="gpu-title">${noWebGpu ? 'This browser has no WebGPU' : 'No usable GPU'}</h2>
      <p>
        Hearth runs models on your GPU through WebGPU, inside this browser. ${
          noWebGpu
            ? 'This browser does not offer WebGPU, so chatting and training cannot run here.'
            : `WebGPU is there, but the engine could not get a GPU: ${gpuError}`
        }
        ${
          this.status?.backend?.kind === 'cpu'
            ? html`Chat runs on the CPU instead (${this.status.backend.description}): slower, and training, beam search, structured
              outputs and checkpoints need WebGPU.`
            : nothing
        }
        Keys, models, runs and the API reference still work.
      </p>
      <ul>
        <li>Use a browser with WebGPU: Chrome or Edge 113 or newer, Safari 26, or Firefox 141 or newer (Windows).</li>
        <li>On Linux, Chrome needs <code>--enable-unsafe-webgpu</code> (or chrome://flags “Unsafe WebGPU Support”) and a Vulkan driver.</li>
        <li>Open the app over https or on localhost: WebGPU is only offered to secure pages.</li>
      </ul>
    </section>`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'hearth-gpu-notice': HearthGpuNotice;
  }
}
