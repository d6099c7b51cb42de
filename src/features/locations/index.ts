/** The locations feature's public face: what other features and the composition root may use. */
export { locationsHandlers } from './locations.handlers';
export { LocationsService } from './locations.service';
