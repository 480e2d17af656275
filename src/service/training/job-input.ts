/**
 * What a training job is given, as stored with the job and handed to the trainer. Experimental
 * settings that arrived as null (ART's "use the default") are dropped, so the trainer sees only
 * what the client chose.
 */
/** One trajectory group as validated by the API (unknown fields kept). */
export type TrajectoryGroupInput = Record<string, unknown> & {
  trajectories: (Record<string, unknown> & { reward: number })[];
};

export interface RlJobInput {
  kind: 'rl';
  trajectoryGroups: TrajectoryGroupInput[];
  /** experimental_config without null values. */
  experimentalConfig: Record<string, unknown>;
}

export interface SftJobInput {
  kind: 'sft';
  trainingDataUrl: string;
  /** Artifact holding the resolved data files (owned by the model). */
  artifactId: string;
  batchSize: number;
  /** One rate for all batches, or one per batch. */
  learningRate: number | number[];
  assistantTurns: 'all' | 'last';
  numExamples: number;
  numBatches: number;
  experimentalConfig: Record<string, unknown>;
}

export type TrainingJobInput = RlJobInput | SftJobInput;

/** Drops keys whose value is null or undefined. */
export function withoutNulls(config: Record<string, unknown> | null | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(config ?? {}).filter(([, v]) => v !== null && v !== undefined));
}
