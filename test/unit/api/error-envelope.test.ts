// The error envelope module on its own: which family a path answers in, each family's body, and
// FastAPI's validation text as vLLM sends it; plus a Service Worker-style standalone Response.
import { describe, expect, it } from 'vitest';
import {
  errorBody,
  errorFamily,
  jsonErrorResponse,
  openaiError,
  validationError,
  type ValidationDetail,
} from '../../../src/service/error-envelope';

describe('errorFamily', () => {
  it("puts /v1/preview and everything below it in the preview family, every other path in OpenAI's", () => {
    for (const path of ['/v1/preview', '/v1/preview/', '/v1/preview/models', '/v1/preview/training-jobs/x/events']) {
      expect(errorFamily(path), path).toBe('preview');
    }
    for (const path of ['/v1/chat/completions', '/v1/chat/completions/', '/v1/models', '/v1/nothing', '/v1/previewer', '/']) {
      expect(errorFamily(path), path).toBe('openai');
    }
  });
});

describe('error bodies', () => {
  it("answers vLLM's envelope on OpenAI paths, with the type named by the status and the field at fault", () => {
    expect(errorBody('openai', 404, 'The model `x` does not exist.')).toEqual({
      error: { message: 'The model `x` does not exist.', type: 'NotFoundError', param: null, code: 404 },
    });
    expect(openaiError(400, 'bad n', 'n')).toEqual({ error: { message: 'bad n', type: 'BadRequestError', param: 'n', code: 400 } });
    expect(openaiError(503, 'later').error.type).toBe('ServiceUnavailableError');
    expect(openaiError(418, 'teapot').error.type).toBe('Error');
  });

  it('answers FastAPI\'s {"detail": "..."} on preview paths, whatever the status', () => {
    expect(errorBody('preview', 404, 'Model m not found.')).toEqual({ detail: 'Model m not found.' });
    expect(errorBody('preview', 409, 'taken', 'name')).toEqual({ detail: 'taken' });
  });
});

describe('validationError', () => {
  const details: ValidationDetail[] = [
    { type: 'greater_than_equal', loc: ['body', 'n'], msg: 'Input should be greater than or equal to 1', input: 0, ctx: { ge: 1 } },
    { type: 'missing', loc: ['body'], msg: 'Field required', input: null, ctx: {} },
  ];

  it('is a 422 detail list in the preview family', () => {
    expect(validationError('preview', details)).toEqual({ status: 422, body: { detail: details } });
  });

  it("is vLLM's 400 with FastAPI's text and the first location as param on OpenAI paths", () => {
    const { status, body } = validationError('openai', details);
    expect(status).toBe(400);
    expect(body).toEqual({
      error: {
        message:
          "2 validation errors:\n  {'type': 'greater_than_equal', 'loc': ('body', 'n'), 'msg': 'Input should be greater than or equal to 1', 'input': 0, 'ctx': {'ge': 1}}\n" +
          "  {'type': 'missing', 'loc': ('body',), 'msg': 'Field required', 'input': None}\n",
        type: 'Bad Request',
        param: 'n',
        code: 400,
      },
    });
  });
});

describe('jsonErrorResponse', () => {
  it('builds a JSON Response in the family of the path, with extra headers', async () => {
    const chat = jsonErrorResponse('/v1/chat/completions', 503, 'No engine.', { 'Retry-After': '2' });
    expect(chat.status).toBe(503);
    expect(chat.headers.get('Content-Type')).toBe('application/json');
    expect(chat.headers.get('Retry-After')).toBe('2');
    expect(await chat.json()).toEqual({ error: { message: 'No engine.', type: 'ServiceUnavailableError', param: null, code: 503 } });
    const preview = jsonErrorResponse('/v1/preview/models', 503, 'No engine.');
    expect(await preview.json()).toEqual({ detail: 'No engine.' });
  });
});
