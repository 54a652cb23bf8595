import { mount } from 'svelte';
import App from './App.svelte';
import { connect } from './backend';
import './app.css';

const target = document.getElementById('app')!;
connect().then((backend) => mount(App, { target, props: { backend } }));
