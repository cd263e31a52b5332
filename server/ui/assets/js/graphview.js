// Node-link drawings with Cytoscape.js: the schema as a graph of types,
// query results with neighbour expansion, and the commit DAG. A drawing
// is never the only way to reach its data: every page lists the same
// things in a table that works with the keyboard and screen readers.

import { need } from './ui.js';

// Okabe–Ito hues (distinguishable with colour-vision deficiencies),
// darkened where needed so white labels keep a contrast above 4.5:1; the
// legend (console.css .lane-key) uses the same list.
const PALETTE = ['#0072B2', '#B34700', '#007A5A', '#A0508A', '#8A6100', '#2E6E9E', '#6B5E00', '#555555'];

export function colour(i) {
  return PALETTE[((i % PALETTE.length) + PALETTE.length) % PALETTE.length];
}

const BASE_STYLE = [
  { selector: 'node', style: {
    label: 'data(label)', 'text-wrap': 'wrap', 'text-valign': 'center', 'text-halign': 'center', color: '#ffffff',
    'font-size': 12, 'font-family': 'system-ui, sans-serif', 'background-color': 'data(colour)', shape: 'round-rectangle',
    width: 'label', height: 'label', padding: '10px', 'text-outline-width': 0,
  } },
  { selector: 'edge', style: {
    label: 'data(label)', 'font-size': 11, 'font-family': 'system-ui, sans-serif', color: '#1a1a1a', 'text-background-color': '#ffffff',
    'text-background-opacity': 0.9, 'text-background-padding': '2px', 'curve-style': 'bezier', 'target-arrow-shape': 'triangle',
    'line-color': '#6b6b6b', 'target-arrow-color': '#6b6b6b', width: 1.5, 'text-rotation': 'autorotate',
  } },
  { selector: 'node:selected', style: { 'border-width': 3, 'border-color': '#111111' } },
  { selector: 'edge:selected', style: { 'line-color': '#111111', 'target-arrow-color': '#111111', width: 3 } },
];

async function make(container, elements, extraStyle, layout) {
  await need('cytoscape');
  container.replaceChildren();
  const cy = window.cytoscape({
    container,
    elements,
    style: BASE_STYLE.concat(extraStyle || []),
    layout: layout || { name: 'cose', animate: false, randomize: false, nodeRepulsion: 9000, idealEdgeLength: 120, padding: 24 },
    wheelSensitivity: 0.3,
    minZoom: 0.2,
    maxZoom: 3,
  });
  // The drawing's instance, for scripts driving the page (the browser tests).
  Object.defineProperty(container, 'cy', { value: cy, configurable: true });
  return cy;
}

// schemaGraph draws node types as boxes (name and row count) and edge
// types as arrows between them. onSelect(kind, name) runs when one is
// hovered or tapped.
export async function schemaGraph(container, catalog, onSelect) {
  const els = [];
  catalog.nodes.forEach((n, i) => {
    els.push({ data: { id: 'n:' + n.name, label: `${n.name}\n${n.rows} rows`, colour: colour(i), kind: 'node', name: n.name } });
  });
  // Several self-loops on one type fan out, each with its label apart.
  const loops = new Map();
  for (const e of catalog.edges) {
    const d = { id: 'e:' + e.name, source: 'n:' + e.from, target: 'n:' + e.to, label: `${e.name} (${e.rows})`, kind: 'edge', name: e.name };
    if (e.from === e.to) {
      const k = loops.get(e.from) || 0;
      loops.set(e.from, k + 1);
      d.loopDir = `${-90 + 70 * k}deg`;
    }
    els.push({ data: d });
  }
  // A handful of types reads best on a circle; more need a force layout.
  const layout = catalog.nodes.length <= 10 ? { name: 'circle', padding: 50, avoidOverlap: true, spacingFactor: 1.1 } : undefined;
  const cy = await make(container, els, [{ selector: 'edge[loopDir]', style: { 'loop-direction': 'data(loopDir)', 'loop-sweep': '-40deg', 'control-point-step-size': 60, 'text-rotation': 'none' } }], layout);
  const pick = (ev) => onSelect(ev.target.data('kind'), ev.target.data('name'));
  cy.on('mouseover tap', 'node, edge', pick);
  return cy;
}

// resultGraph draws result nodes ({key, id, type, label, typeIndex,
// props}) and links ({from, to, label}); onTap(node's data) runs when a
// node is tapped.
export async function resultGraph(container, onTap) {
  const cy = await make(container, [], [], { name: 'preset' });
  cy.on('tap', 'node', (ev) => onTap(ev.target.data()));
  const api = {
    cy,
    // add puts nodes and links not drawn yet, then lays the graph out.
    add(nodes, links) {
      const fresh = [];
      for (const n of nodes) {
        if (cy.getElementById(n.key).empty()) {
          fresh.push({ group: 'nodes', data: { id: n.key, label: n.label, colour: colour(n.typeIndex), type: n.type, nodeId: n.id, props: n.props || { id: n.id } } });
        }
      }
      cy.add(fresh);
      const edges = [];
      for (const l of links) {
        const id = 'l:' + l.from + '>' + l.to + ':' + l.label;
        if (cy.getElementById(id).empty() && !cy.getElementById(l.from).empty() && !cy.getElementById(l.to).empty()) {
          edges.push({ group: 'edges', data: { id, source: l.from, target: l.to, label: l.label } });
        }
      }
      cy.add(edges);
      // Laid out within the drawing's own box, so labels keep a readable
      // size instead of the whole graph being zoomed out to fit.
      const w = container.clientWidth || 800;
      const hgt = container.clientHeight || 460;
      cy.layout({ name: 'cose', animate: false, randomize: false, nodeRepulsion: 12000, idealEdgeLength: 70, padding: 20,
        nodeDimensionsIncludeLabels: true, boundingBox: { x1: 0, y1: 0, w, h: hgt } }).run();
      cy.fit(undefined, 20);
      return fresh.length;
    },
    count() { return cy.nodes().length; },
  };
  return api;
}

// commitDag draws commits ({id, label, lane, row, branchTip, merge}) and
// parent links ({from, to, merge}) in lanes, newest on top.
export async function commitDag(container, commits, links, onTap) {
  const els = commits.map((c) => ({
    data: { id: c.id, label: c.label, colour: colour(c.lane), tip: c.branchTip ? 'yes' : 'no' },
    position: { x: 30 + c.lane * 56, y: 30 + c.row * 44 },
  }));
  for (const l of links) {
    els.push({ data: { id: l.from + '>' + l.to, source: l.from, target: l.to, label: '', merge: l.merge ? 'yes' : 'no' } });
  }
  const cy = await make(container, els, [
    { selector: 'node', style: { shape: 'ellipse', width: 16, height: 16, padding: 0, label: 'data(label)', 'text-halign': 'right', 'text-valign': 'center', 'text-margin-x': 8, color: '#1a1a1a', 'font-family': 'ui-monospace, monospace', 'font-size': 11 } },
    { selector: 'node[tip = "yes"]', style: { 'font-weight': 'bold' } },
    { selector: 'edge', style: { 'curve-style': 'straight', 'target-arrow-shape': 'none', 'line-color': '#8a8a8a', width: 2 } },
    { selector: 'edge[merge = "yes"]', style: { 'line-style': 'dashed', 'line-color': '#A0508A' } },
  ], { name: 'preset', fit: false, padding: 10 });
  cy.userZoomingEnabled(false);
  cy.on('tap', 'node', (ev) => onTap(ev.target.id()));
  return cy;
}
