/**
 * Trajectory shapes as OpenPipe ART sends them (`TrajectoryGroup.model_dump(mode="json")`):
 * groups of trajectories whose `messages_and_choices` mix OpenAI message dicts and Choice
 * objects copied from chat completions. Unknown fields are accepted and kept (newer clients add
 * fields), but every known field is checked.
 *
 * Reference: specification "Trajectory resources"; ../../../../shared/reference/art-compat.md §2.
 */
import { z } from 'zod';

/** A metric value: ART's `dict[str, float | int | bool]`. */
export const MetricValue = z.union([z.number(), z.boolean()]);
const MetricRecord = z.record(z.string(), MetricValue);
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
    parameters: z.record(z.string(), z.unknown()).nullish(),
    strict: z.boolean().nullish(),
  }),
});

/** An OpenAI chat message param; never trained on by itself. */
export const MessageParam = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(z.unknown()), z.null()]).optional(),
  name: z.string().nullish(),
  tool_calls: z.array(ToolCall).nullish(),
  tool_call_id: z.string().nullish(),
});

const TokenLogprob = z.looseObject({
  token: z.string(),
  logprob: z.number(),
  bytes: z.array(z.int()).nullish(),
  top_logprobs: z.array(z.looseObject({ token: z.string(), logprob: z.number(), bytes: z.array(z.int()).nullish() })).nullish(),
});

/** A Choice from a chat completion; trainable when it carries logprobs. */
export const Choice = z.looseObject({
  finish_reason: z.string(),
  index: z.int().min(0),
  logprobs: z.looseObject({ content: z.array(TokenLogprob).nullish(), refusal: z.array(TokenLogprob).nullish() }).nullish(),
  message: z.looseObject({
    role: z.literal('assistant'),
    content: z.string().nullish(),
    tool_calls: z.array(ToolCall).nullish(),
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
  if (!result.success) for (const issue of result.error.issues) ctx.addIssue(issue as Parameters<typeof ctx.addIssue>[0]);
});

const History = z.looseObject({
  messages_and_choices: z.array(MessageOrChoice),
  tools: z.array(Tool).nullish(),
});

export const Trajectory = z.looseObject({
  messages_and_choices: z.array(MessageOrChoice),
  tools: z.array(Tool).nullish(),
  additional_histories: z.array(History).nullish(),
  reward: z.number(),
  initial_policy_version: z.int().nullish(),
  final_policy_version: z.int().nullish(),
  metrics: MetricRecord.nullish(),
  metadata: z.record(z.string(), MetadataValue).nullish(),
  logs: z.array(z.string()).nullish(),
  start_time: z.iso.datetime({ offset: true, local: true }).nullish(),
});

/** A rollout that raised: not a trajectory, carries no reward. */
export const TrajectoryException = z.looseObject({
  type: z.string(),
  message: z.string(),
  traceback: z.string().nullish(),
});

export const TrajectoryGroup = z.looseObject({
  trajectories: z.array(Trajectory),
  exceptions: z.array(TrajectoryException).nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  metrics: MetricRecord.nullish(),
  logs: z.array(z.string()).nullish(),
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
  trajectory_groups: z.array(TrajectoryGroup),
  model_id: z.string().nullish(),
});
