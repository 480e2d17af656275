/**
 * /v1/chat/completions, until the chat-completions issue replaces this file: routed and
 * authenticated like every /v1 endpoint, it answers 503 in vLLM's error envelope so OpenAI-SDK
 * clients get a clear APIError instead of a hang or a 404.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { errorResponse } from '../errors';

export const chat = new Hono<AppEnv>();

chat.post('/completions', (c) =>
  errorResponse(c, 503, 'Chat completions are not available yet in this version of Hearth: the inference engine has not been built.'),
);
