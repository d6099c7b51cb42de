/** Ingestion (with the clip): probe, assets, web video, the free clip. What other features and the composition root may use. */
export { CLIP_JOB, INGEST_JOB, ingestionJobs } from './ingestion.jobs';
export { IngestionService } from './ingestion.service';
