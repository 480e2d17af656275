// Which view a location hash selects.
import { expect, it } from 'vitest';
import { parseRoute } from '../../../src/ui/route';

const VIEWS = ['chat', 'training', 'runs'];

it('reads the view, its sub id and query from the hash', () => {
  expect(parseRoute('#/training/6e89-1', VIEWS)).toMatchObject({ view: 'training', sub: '6e89-1' });
  const r = parseRoute('#/training?model=abc', VIEWS);
  expect([r.view, r.sub, r.query.get('model')]).toEqual(['training', '', 'abc']);
  expect(parseRoute('#runs/a%2Fb', VIEWS)).toMatchObject({ view: 'runs', sub: 'a/b' });
});

it('falls back to the first view for an empty or unknown hash', () => {
  expect(parseRoute('', VIEWS)).toMatchObject({ view: 'chat', sub: '' });
  expect(parseRoute('#/nope/x?y=1', VIEWS)).toMatchObject({ view: 'chat', sub: '' });
  expect(parseRoute('#/nope/x?y=1', VIEWS).query.get('y')).toBeNull();
});
