export { losingFirstAnswer, type LostWhen } from './lost-answer-log.js';
