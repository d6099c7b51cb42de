/**
 * String formats of the contract whose values the stores hand to typed database columns (uuid,
 * date, timestamp), checked as strictly as those columns and JavaScript's Date read them. The
 * request validator uses these instead of ajv-formats' fast ones, which accept `urn:uuid:`
 * prefixes, month 19, hour 29 and the leap second 23:59:60 (an invalid Date here, an error in
 * PostgreSQL). The mock server uses the same definitions.
 */
export const STORED_VALUE_FORMATS: Record<string, { type: 'string'; validate: (value: string) => boolean }> = {
  uuid: { type: 'string', validate: (v) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v) },
  date: { type: 'string', validate: (v) => /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(Date.parse(`${v}T00:00:00Z`)) },
  'date-time': {
    type: 'string',
    validate: (v) => /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/.test(v) && !Number.isNaN(Date.parse(v)),
  },
};
