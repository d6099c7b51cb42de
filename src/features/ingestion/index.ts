/** Ingestion (with the clip): probe, assets, web video, the free clip. What other features and the composition root may use. */
export { ingestionJobs } from './ingestion.jobs';
export { CLIP_JOB, INGEST_JOB, IngestionService } from './ingestion.service';
