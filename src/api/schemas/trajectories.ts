/**
 * Trajectory shapes as OpenPipe ART sends them (`TrajectoryGroup.model_dump(mode="json")`):
 * groups of trajectories whose `messages_and_choices` mix OpenAI message dicts and Choice
 * objects copied from chat completions. Unknown fields are accepted and kept (newer clients add
 * fields), but every known field is checked.
 *
 * Reference: specification "Trajectory resources"; docs/reference/art-compat.md §2.
 */
import { z } from 'zod';
import { dict, dictOf, list, MAX_LIST_ISSUES } from './lists';

// Caps on every list and dict (issue 26), far above what a rollout holds, so that no log or job
// body makes one validation issue per entry. `logprobs.content` has one entry per token.
/** Most trajectory groups of one request, trajectories or exceptions of a group, messages of a trajectory, log lines. */
export const MAX_TRAJECTORY_ITEMS = 4096;
/** Most tools, tool calls, content parts, additional histories, top logprobs; keys of a metrics or metadata dict. */
const MAX_SMALL_LIST = 1024;
/** Most token logprobs of one choice (a 128 Ki-token context) and bytes of one token. */
const MAX_TOKENS = 131_072;
const MAX_TOKEN_BYTES = 4096;

/** A metric value: ART's `dict[str, float | int | bool]`. */
export const MetricValue = z.union([z.number(), z.boolean()]);
const MetricRecord = dictOf(MetricValue, MAX_SMALL_LIST);
const MetadataValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);

const ToolCall = z.looseObject({
  id: z.string(),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

/** `{type: "function", function: {name, description, parameters, strict}}`. */
export const Tool = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().nullish(),
    parameters: dict(MAX_SMALL_LIST).nullish(),
    strict: z.boolean().nullish(),
  }),
});

/** An OpenAI chat message param; never trained on by itself. */
export const MessageParam = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), list(z.unknown(), MAX_SMALL_LIST), z.null()]).optional(),
  name: z.string().nullish(),
  tool_calls: list(ToolCall, MAX_SMALL_LIST).nullish(),
  tool_call_id: z.string().nullish(),
});

const TokenLogprob = z.looseObject({
  token: z.string(),
  logprob: z.number(),
  bytes: list(z.int(), MAX_TOKEN_BYTES).nullish(),
  top_logprobs: list(
    z.looseObject({ token: z.string(), logprob: z.number(), bytes: list(z.int(), MAX_TOKEN_BYTES).nullish() }),
    MAX_SMALL_LIST,
  ).nullish(),
});

/** A Choice from a chat completion; trainable when it carries logprobs. */
export const Choice = z.looseObject({
  finish_reason: z.string(),
  index: z.int().min(0),
  logprobs: z
    .looseObject({ content: list(TokenLogprob, MAX_TOKENS).nullish(), refusal: list(TokenLogprob, MAX_TOKENS).nullish() })
    .nullish(),
  message: z.looseObject({
    role: z.literal('assistant'),
    content: z.string().nullish(),
    tool_calls: list(ToolCall, MAX_SMALL_LIST).nullish(),
    refusal: z.string().nullish(),
  }),
});

/**
 * A message dict or a Choice, told apart the way ART does: a `role` key means a message. A
 * plain union would report both shapes' errors for every bad item.
 */
export const MessageOrChoice = z.unknown().superRefine((value, ctx) => {
  const isMessage = typeof value === 'object' && value !== null && 'role' in value;
  const result = (isMessage ? MessageParam : Choice).safeParse(value);
  if (!result.success)
    for (const issue of result.error.issues.slice(0, MAX_LIST_ISSUES)) ctx.addIssue(issue as Parameters<typeof ctx.addIssue>[0]);
});

const History = z.looseObject({
  messages_and_choices: list(MessageOrChoice, MAX_TRAJECTORY_ITEMS),
  tools: list(Tool, MAX_SMALL_LIST).nullish(),
});

export const Trajectory = z.looseObject({
  messages_and_choices: list(MessageOrChoice, MAX_TRAJECTORY_ITEMS),
  tools: list(Tool, MAX_SMALL_LIST).nullish(),
  additional_histories: list(History, MAX_SMALL_LIST).nullish(),
  reward: z.number(),
  initial_policy_version: z.int().nullish(),
  final_policy_version: z.int().nullish(),
  metrics: MetricRecord.nullish(),
  metadata: dictOf(MetadataValue, MAX_SMALL_LIST).nullish(),
  logs: list(z.string(), MAX_TRAJECTORY_ITEMS).nullish(),
  start_time: z.iso.datetime({ offset: true, local: true }).nullish(),
});

/** A rollout that raised: not a trajectory, carries no reward. */
export const TrajectoryException = z.looseObject({
  type: z.string(),
  message: z.string(),
  traceback: z.string().nullish(),
});

export const TrajectoryGroup = z.looseObject({
  trajectories: list(Trajectory, MAX_TRAJECTORY_ITEMS),
  exceptions: list(TrajectoryException, MAX_TRAJECTORY_ITEMS).nullish(),
  metadata: dict(MAX_SMALL_LIST).nullish(),
  metrics: MetricRecord.nullish(),
  logs: list(z.string(), MAX_TRAJECTORY_ITEMS).nullish(),
});
export type TrajectoryGroup = z.infer<typeof TrajectoryGroup>;

/** Metric key prefixes: `val`, `train`, or any other name (ART treats split as free-form). */
export const Split = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_.-]+$/);

/** POST /v1/preview/models/{model_id}/log. ART also sends `model_id`; it must match the path. */
export const LogRequest = z.strictObject({
  split: Split,
  trajectory_groups: list(TrajectoryGroup, MAX_TRAJECTORY_ITEMS),
  model_id: z.string().nullish(),
});
