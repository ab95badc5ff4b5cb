// Prints whether jemalloc is mapped into this process, and into a child it spawns after
// forgetting the preloaded allocator (as every service does at start).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { forgetPreloadedAllocator } from '../allocator.js';

const mapped = (maps: string): boolean => maps.includes('libjemalloc');
const self = mapped(readFileSync('/proc/self/maps', 'utf8'));
forgetPreloadedAllocator();
const child = mapped(execFileSync('cat', ['/proc/self/maps'], { encoding: 'utf8' }));
console.log(JSON.stringify({ self, child, preload: process.env['LD_PRELOAD'] ?? null }));
